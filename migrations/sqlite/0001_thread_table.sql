CREATE TABLE `checkpoint_threads` (
	`thread_id` text PRIMARY KEY NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`checkpoints` integer DEFAULT 0 NOT NULL,
	`latest_checkpoint_id` text,
	`metadata` text,
	`pinned` integer DEFAULT false NOT NULL,
	`meta_user_id` text GENERATED ALWAYS AS (case when json_type(metadata, '$.user_id') = 'text' then json_extract(metadata, '$.user_id') end) VIRTUAL
);
--> statement-breakpoint
CREATE INDEX `checkpoint_threads_updated_at_idx` ON `checkpoint_threads` (`updated_at`,`thread_id`);--> statement-breakpoint
CREATE INDEX `checkpoint_threads_created_at_idx` ON `checkpoint_threads` (`created_at`,`thread_id`);--> statement-breakpoint
CREATE INDEX `checkpoint_threads_meta_user_id_idx` ON `checkpoint_threads` (`meta_user_id`,`updated_at`);--> statement-breakpoint
-- Hand-written: backfill, one row per thread that has checkpoints (the same row the saver keeps
-- current: first and newest checkpoint in any namespace, count and newest of the root namespace "").
INSERT INTO `checkpoint_threads` (`thread_id`, `created_at`, `updated_at`, `checkpoints`, `latest_checkpoint_id`, `metadata`)
SELECT a.`thread_id`, a.`first_at`, a.`last_at`, a.`root_count`, l.`checkpoint_id`, l.`metadata`
FROM (
	SELECT `thread_id`, min(`created_at`) AS `first_at`, max(`created_at`) AS `last_at`,
		sum(`checkpoint_ns` = '') AS `root_count`
	FROM `checkpoints` GROUP BY `thread_id`
) a
LEFT JOIN `checkpoints` l ON l.`thread_id` = a.`thread_id` AND l.`checkpoint_ns` = ''
	AND l.`checkpoint_id` = (
		SELECT max(m.`checkpoint_id`) FROM `checkpoints` m
		WHERE m.`thread_id` = a.`thread_id` AND m.`checkpoint_ns` = ''
	);
