"""The Spark executor: the window operator compiled to DataFrame plans, state in Delta."""
