"""The ways of jitting a method, read top-down: each way's record (``record``: the
:class:`Way`), the catalog of ways (``catalog``) and the registry of the built-in strategies
(``registry``), how a way reads the user's call (``calls``) and is built from the object
(``builders``), the names its printed code reads (``names``), the subject that plays it
(``subject``: a built-in strategy, a user's object, a way of jitting it) and its code run as
printed (``printed``). Map: README.md in this folder.
"""
