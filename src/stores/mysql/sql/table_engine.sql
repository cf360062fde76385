-- The lock table's engine (?: its bare name, an escaped literal).
SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?
