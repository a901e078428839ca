"""A batch's input before windowing: the internal columns, preparation, the batch's time, its Spark settings."""
