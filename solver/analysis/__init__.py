"""Why the plan is what it is: explanation, levers, compare, infeasibility diagnosis, cost
attribution, capacity reports and what the HTML report draws.

Imports: anything in solver/ but solver.studies."""
