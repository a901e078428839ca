"""The windowing core: window semantics with no Spark dependency.

Everything here is plain Python (a test enforces that nothing in this package
imports pyspark). It defines the vocabulary (windows, assigners, triggers,
evictors, aggregate functions, the window spec) and the reference model of
the operator, which is the executable specification every executor is
checked against.
"""
