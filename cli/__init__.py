"""The `fleetplan` command line: parse, call one library function, render, map errors to
exit codes. No arithmetic lives here."""
