-- frag_heard_cluster.lua - {{heard}} in fn_handoff.lua on Redis Cluster.
-- PUBLISH counts the subscribers of the node it runs on only, while the
-- message reaches every node's.  A count of 0 there does not mean nobody
-- heard (the waiter may have, on another node, and would take the lock
-- as handed over): the hand-off is made to every live entry, and a waiter
-- that died holds what it was handed until its lease runs out, as any
-- dead holder does.  A Lua expression, filled in by scripts.c at open.
true
