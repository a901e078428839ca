"""Runnable examples: the two demos (``winjob demo``, ``winjob demo --sessions``) and example
user functions (a trigger, an assigner, an evictor) that job files name by import path,
e.g. ``trigger = "examples.triggers:EveryNthLarge"``."""
