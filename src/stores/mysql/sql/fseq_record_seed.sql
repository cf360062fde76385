-- Durable (InnoDB, autocommit): a later seed starts above this one (%lld,
-- twice) even if the clock is set back.
INSERT INTO {{fences}} (name, fence) VALUES ('', %lld) ON DUPLICATE KEY UPDATE fence = GREATEST(fence, %lld)
