-- Hand-written (drizzle-kit dropped the column and its index without adding the index back):
-- `meta_user_id` becomes STORED. MariaDB cannot turn a VIRTUAL column STORED in place, so the
-- index and the column are dropped and added again, in one ALTER: one DDL statement is atomic,
-- so a setup() killed here leaves either the old table or the new one. The copy the ALTER makes
-- computes the column for every existing row.
-- Why: the user_id thread search read through an index on a VIRTUAL column of a table every
-- put updates, and missed threads twice under load (issue 28); InnoDB keeps a STORED column's
-- value in the row, so neither its reads nor its purge compute the expression again.
ALTER TABLE `checkpoint_threads`
	DROP INDEX `checkpoint_threads_meta_user_id_idx`,
	DROP COLUMN `meta_user_id`,
	ADD COLUMN `meta_user_id` varchar(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin GENERATED ALWAYS AS (case when json_type(json_extract(metadata, '$.user_id')) = 'STRING' and char_length(json_unquote(json_extract(metadata, '$.user_id'))) <= 255 then json_unquote(json_extract(metadata, '$.user_id')) end) STORED,
	ADD INDEX `checkpoint_threads_meta_user_id_idx` (`meta_user_id`, `updated_at`);
