"""Spark executors coordinating partition ownership through kgroup.

The data source arrives with its own issue; this package only reserves the
name so the distribution layout is final.
"""
