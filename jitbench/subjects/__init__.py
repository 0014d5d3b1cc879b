"""What is measured, and how it is judged: the subject, the scenario, the audit, the verdict.

``subject`` (one model of a built-in strategy and of a user's object: how it is
built, called and changed, and its oracle), ``scenario`` (what a user does to
an object, step by step, and the call right after a change), ``audit`` (what
jit's cache did at each step), ``verdict`` (the hazards in words, and the
built-in strategy the object behaves like), ``ways`` (every way of jitting a
user's call, each a subject built from the user's object: ``jitbench advise``).
"""
