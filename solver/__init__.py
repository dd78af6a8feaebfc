"""What to buy: candidates, the integer program, backends, plans and their explanation.

Nothing in this package imports `cli`.
"""
