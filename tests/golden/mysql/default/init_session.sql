SET NAMES utf8mb4 COLLATE utf8mb4_general_ci, time_zone = '+00:00', autocommit = 1, @dl_idle = 0 /*M!100300 , SESSION idle_transaction_timeout = 5 */
