-- Resource limits of archer_vector (issue #22 item 6).
--
-- archer.insert_buffer_max_entries is the point where an inserting
-- session merges the insert buffer itself.  Raised by any user, it would
-- let the buffer grow without bound (with no merge worker), and every
-- scan reads all of it: only superusers, or roles granted SET on it,
-- change it.
-- (the library defines it: loaded first, in case it is not preloaded)
LOAD 'archer';
SELECT context FROM pg_settings WHERE name = 'archer.insert_buffer_max_entries';
CREATE ROLE regress_vlim_user;
SET ROLE regress_vlim_user;
SET archer.insert_buffer_max_entries = 1000000;
SHOW archer.insert_buffer_max_entries;
RESET ROLE;
GRANT SET ON PARAMETER archer.insert_buffer_max_entries TO regress_vlim_user;
SET ROLE regress_vlim_user;
SET archer.insert_buffer_max_entries = 5000;
SHOW archer.insert_buffer_max_entries;
RESET archer.insert_buffer_max_entries;
RESET ROLE;
REVOKE SET ON PARAMETER archer.insert_buffer_max_entries FROM regress_vlim_user;
DROP ROLE regress_vlim_user;
