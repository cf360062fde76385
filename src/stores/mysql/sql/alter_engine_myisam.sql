-- For a session-mode table of dlock 0.1 (printed commented out).
ALTER TABLE {{table}} ENGINE=MyISAM
