"""Benchmarks: kgroup's assignors against kafka-python 3.0's, same input, same run."""
