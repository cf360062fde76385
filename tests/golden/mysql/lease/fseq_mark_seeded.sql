INSERT IGNORE INTO `shared_locks_boot` VALUES (1)
