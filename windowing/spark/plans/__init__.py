"""The DataFrame plans: the registry, what plans share, the executor, the plan families, the trigger rules,
the window families' geometry and slicing, the aggregates' Spark forms."""
