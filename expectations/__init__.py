"""Great Expectations suites for raw events, window results, late/quarantine tables and state.

Built in the data-quality issue; the tables they check are described in the README
("Outputs") and produced by ``windowing.spark.operator.SparkWindowOperator``.
"""
