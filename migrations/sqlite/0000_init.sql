CREATE TABLE `checkpoint_blobs` (
	`thread_id` text NOT NULL,
	`checkpoint_ns` text DEFAULT '' NOT NULL,
	`channel` text NOT NULL,
	`version` text NOT NULL,
	`type` text NOT NULL,
	`blob` blob,
	PRIMARY KEY(`thread_id`, `checkpoint_ns`, `channel`, `version`)
);
--> statement-breakpoint
CREATE TABLE `checkpoint_writes` (
	`thread_id` text NOT NULL,
	`checkpoint_ns` text DEFAULT '' NOT NULL,
	`checkpoint_id` text NOT NULL,
	`task_id` text NOT NULL,
	`idx` integer NOT NULL,
	`channel` text NOT NULL,
	`type` text NOT NULL,
	`blob` blob,
	`task_path` text DEFAULT '' NOT NULL,
	PRIMARY KEY(`thread_id`, `checkpoint_ns`, `checkpoint_id`, `task_id`, `idx`)
);
--> statement-breakpoint
CREATE TABLE `checkpoints` (
	`thread_id` text NOT NULL,
	`checkpoint_ns` text DEFAULT '' NOT NULL,
	`checkpoint_id` text NOT NULL,
	`parent_checkpoint_id` text,
	`checkpoint_type` text NOT NULL,
	`checkpoint` blob NOT NULL,
	`channel_versions` text NOT NULL,
	`metadata` text NOT NULL,
	`meta_source` text GENERATED ALWAYS AS (case when json_type(metadata, '$.source') = 'text' then json_extract(metadata, '$.source') end) VIRTUAL,
	`meta_step` real GENERATED ALWAYS AS (case when json_type(metadata, '$.step') in ('integer', 'real') then json_extract(metadata, '$.step') end) VIRTUAL,
	`meta_run_id` text GENERATED ALWAYS AS (case when json_type(metadata, '$.run_id') = 'text' then json_extract(metadata, '$.run_id') end) VIRTUAL,
	`created_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	PRIMARY KEY(`thread_id`, `checkpoint_ns`, `checkpoint_id`)
);
--> statement-breakpoint
CREATE INDEX `checkpoints_checkpoint_id_idx` ON `checkpoints` (`checkpoint_id`);--> statement-breakpoint
CREATE INDEX `checkpoints_meta_source_idx` ON `checkpoints` (`meta_source`,`checkpoint_id`);--> statement-breakpoint
CREATE INDEX `checkpoints_meta_step_idx` ON `checkpoints` (`meta_step`,`checkpoint_id`);--> statement-breakpoint
CREATE INDEX `checkpoints_meta_run_id_idx` ON `checkpoints` (`meta_run_id`);--> statement-breakpoint
CREATE INDEX `checkpoints_thread_checkpoint_id_idx` ON `checkpoints` (`thread_id`,`checkpoint_id`);--> statement-breakpoint
CREATE INDEX `checkpoints_thread_created_at_idx` ON `checkpoints` (`thread_id`,`created_at`);