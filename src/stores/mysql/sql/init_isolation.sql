-- A new connection's second command: fewer gap locks between concurrent
-- INSERTs and DELETEs of a key.
SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED
