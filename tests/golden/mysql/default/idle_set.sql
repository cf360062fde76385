@dl_idle = 0 /*M!100300 , SESSION idle_transaction_timeout = ? */
