"""The regions' stage of a solve with whole servers: each region's own program, their
bound on the whole and the whole program floored at their fleets (join), the plan a
solve makes of them, or the cover where the clock stopped them (plan), the search that
improves that plan a few regions at a time (search), and the share of the stage's time
the regions' programs take (timing). The regions' own programs and the bounds they give
as rows of the whole program are solver.decompose.region_bounds."""
