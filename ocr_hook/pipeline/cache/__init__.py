"""The result cache: entries by diff hash, their stored shapes, and what a run looks up and stores.
"""
