"""The limits on reading a file, each with the reason it is where it is: its size, its
nesting and values, the issues one report lists, the length of a name or a path. They
bound what no file can make the reader do (hang, exhaust the machine);
models.schema.limits holds the limits on the values the file holds.
"""

# --- reading files ----------------------------------------------------------------------

MAX_DOCUMENT_BYTES = 8 * 2**20
"""8 MiB: the largest instance the list limits below allow is about 2 MB of YAML; plans
are larger but JSON parses at ~30 MB/s. A bigger file is junk, not a fleet."""
MAX_PLAN_BYTES = 64 * 2**20
"""64 MiB: a plan (or golden result) fleetplan wrote itself and reads back (`simulate`,
`verify`): a 12-month hourly plan of 5 regions x 5 workloads is about 11 MB of indented
JSON (each month's 24 hours state their pools and scenarios), so the instance limit
would refuse plans the tool writes; JSON parses at ~30 MB/s, a couple of seconds here."""
MAX_NESTING_DEPTH = 32
"""Containers inside containers: fleetplan's own files nest at most 7 levels (an
`explain --json` report); 100,000 levels would crash a recursive parser."""
MAX_DOCUMENT_NODES = 250_000
"""Values (scalars, lists, mappings) of a YAML file after alias expansion: the largest
instance the list limits allow has about 160,000; PyYAML builds roughly 100,000 values a
second, so this bounds a read to seconds, and a billion-laughs file (10^9) is refused
after reading a few hundred bytes."""
MAX_ISSUES_REPORTED = 50
"""Problems listed for one file; the rest are counted (a file of 10^5 junk keys would
otherwise print 10^5 lines)."""
MAX_NAME_CHARS = 256
"""Longest name an instance may give (the instance, a region, a workload, a GPU or model
entry): real ones run to some 40 characters (a Hugging Face id); a name of 100,000
characters hung `report` past 20 s while the charts laid out their tick labels."""
MAX_PATH_CHARS = 4096
"""Longest file path an instance may name (an engine profile file): Linux's PATH_MAX."""
