"""The Spark runtime: the one SparkSession of a process, py4j calls in fewer round trips, local frames."""
