-- Durable (InnoDB, autocommit): a later seed starts above this one (?,
-- twice) even if the clock is set back.
INSERT INTO {{fences}} (name, fence) VALUES ('', ?) ON DUPLICATE KEY UPDATE fence = GREATEST(fence, ?)
