"""A run's profile: read (:mod:`.run`), judged (:mod:`.findings`), drawn
(:mod:`.page`), compared (:mod:`.compare`), and ``python -m
chainer_hookext`` (:mod:`.command`); docs/profile.md.
"""
