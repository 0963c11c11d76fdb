"""Placeholder until the family lands in this session."""
