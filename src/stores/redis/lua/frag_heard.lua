-- frag_heard.lua - {{heard}} in fn_handoff.lua on a standalone server (or
-- Sentinel's master): whether the waiter a hand-off told on its own
-- channel heard it, from PUBLISH's count n.  An error (no channel rights)
-- counts as heard.  A Lua expression, not a script: scripts.c fills it in
-- at open, without its final newline.
(type(n) ~= 'number' or n > 0)
