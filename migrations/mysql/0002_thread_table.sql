CREATE TABLE `checkpoint_threads` (
	`thread_id` varbinary(1020) NOT NULL,
	`created_at` bigint NOT NULL,
	`updated_at` bigint NOT NULL,
	`checkpoints` int NOT NULL DEFAULT 0,
	`latest_checkpoint_id` varbinary(1020),
	`metadata` json,
	`pinned` boolean NOT NULL DEFAULT false,
	`meta_user_id` varchar(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin GENERATED ALWAYS AS (case when json_type(json_extract(metadata, '$.user_id')) = 'STRING' and char_length(json_unquote(json_extract(metadata, '$.user_id'))) <= 255 then json_unquote(json_extract(metadata, '$.user_id')) end) VIRTUAL,
	CONSTRAINT `checkpoint_threads_thread_id` PRIMARY KEY(`thread_id`)
);
--> statement-breakpoint
CREATE INDEX `checkpoint_threads_updated_at_idx` ON `checkpoint_threads` (`updated_at`,`thread_id`);--> statement-breakpoint
CREATE INDEX `checkpoint_threads_created_at_idx` ON `checkpoint_threads` (`created_at`,`thread_id`);--> statement-breakpoint
CREATE INDEX `checkpoint_threads_meta_user_id_idx` ON `checkpoint_threads` (`meta_user_id`,`updated_at`);--> statement-breakpoint
-- Hand-written: backfill, one row per thread that has checkpoints (the same row the saver keeps
-- current: first and newest checkpoint in any namespace, count and newest of the root namespace "").
-- REPLACE: a migration resumed after a kill (see mysql-migrations.ts) replaces what it wrote before.
REPLACE INTO `checkpoint_threads` (`thread_id`, `created_at`, `updated_at`, `checkpoints`, `latest_checkpoint_id`, `metadata`)
SELECT a.`thread_id`, a.`first_at`, a.`last_at`, a.`root_count`, l.`checkpoint_id`, l.`metadata`
FROM (
	SELECT `thread_id`, min(`created_at`) AS `first_at`, max(`created_at`) AS `last_at`,
		sum(`ns_hash` = unhex(sha2('', 256))) AS `root_count`
	FROM `checkpoints` GROUP BY `thread_id`
) a
LEFT JOIN `checkpoints` l ON l.`thread_id` = a.`thread_id` AND l.`ns_hash` = unhex(sha2('', 256))
	AND l.`checkpoint_id` = (
		SELECT max(m.`checkpoint_id`) FROM `checkpoints` m
		WHERE m.`thread_id` = a.`thread_id` AND m.`ns_hash` = unhex(sha2('', 256))
	);
