CREATE TABLE `checkpoint_blobs` (
	`thread_id` varbinary(1020) NOT NULL,
	`checkpoint_ns` text CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
	`ns_hash` binary(32) NOT NULL,
	`channel` varbinary(1020) NOT NULL,
	`version` varchar(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
	`type` varchar(64) NOT NULL,
	`blob` longblob,
	CONSTRAINT `checkpoint_blobs_pk` PRIMARY KEY(`thread_id`,`ns_hash`,`channel`,`version`)
) PARTITION BY KEY (`thread_id`) PARTITIONS 8;
--> statement-breakpoint
CREATE TABLE `checkpoint_writes` (
	`thread_id` varbinary(1020) NOT NULL,
	`checkpoint_ns` text CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
	`ns_hash` binary(32) NOT NULL,
	`checkpoint_id` varbinary(1020) NOT NULL,
	`task_id` varbinary(1020) NOT NULL,
	`task_hash` binary(32) NOT NULL,
	`idx` int NOT NULL,
	`channel` text NOT NULL,
	`type` varchar(64) NOT NULL,
	`blob` longblob,
	`task_path` text NOT NULL,
	CONSTRAINT `checkpoint_writes_pk` PRIMARY KEY(`thread_id`,`ns_hash`,`checkpoint_id`,`task_hash`,`idx`)
) PARTITION BY KEY (`thread_id`) PARTITIONS 8;
--> statement-breakpoint
CREATE TABLE `checkpoints` (
	`thread_id` varbinary(1020) NOT NULL,
	`checkpoint_ns` text CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
	`ns_hash` binary(32) NOT NULL,
	`checkpoint_id` varbinary(1020) NOT NULL,
	`parent_checkpoint_id` varbinary(1020),
	`checkpoint_type` varchar(64) NOT NULL,
	`checkpoint` longblob NOT NULL,
	`channel_versions` json NOT NULL,
	`metadata` json NOT NULL,
	`meta_source` varchar(64) GENERATED ALWAYS AS (case when json_type(json_extract(metadata, '$.source')) = 'STRING' and char_length(json_unquote(json_extract(metadata, '$.source'))) <= 64 then json_unquote(json_extract(metadata, '$.source')) end) VIRTUAL,
	`meta_step` double GENERATED ALWAYS AS (case when json_type(json_extract(metadata, '$.step')) in ('INTEGER', 'UNSIGNED INTEGER', 'DOUBLE', 'DECIMAL') then json_extract(metadata, '$.step') + 0 end) VIRTUAL,
	`meta_run_id` varchar(255) GENERATED ALWAYS AS (case when json_type(json_extract(metadata, '$.run_id')) = 'STRING' and char_length(json_unquote(json_extract(metadata, '$.run_id'))) <= 255 then json_unquote(json_extract(metadata, '$.run_id')) end) VIRTUAL,
	`created_at` timestamp(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
	CONSTRAINT `checkpoints_pk` PRIMARY KEY(`thread_id`,`ns_hash`,`checkpoint_id`)
) PARTITION BY KEY (`thread_id`) PARTITIONS 8;
--> statement-breakpoint
CREATE INDEX `checkpoints_checkpoint_id_idx` ON `checkpoints` (`checkpoint_id`);--> statement-breakpoint
CREATE INDEX `checkpoints_meta_source_idx` ON `checkpoints` (`meta_source`,`checkpoint_id`);--> statement-breakpoint
CREATE INDEX `checkpoints_meta_step_idx` ON `checkpoints` (`meta_step`,`checkpoint_id`);--> statement-breakpoint
CREATE INDEX `checkpoints_meta_run_id_idx` ON `checkpoints` (`meta_run_id`);--> statement-breakpoint
CREATE INDEX `checkpoints_thread_checkpoint_id_idx` ON `checkpoints` (`thread_id`,`checkpoint_id`);--> statement-breakpoint
CREATE INDEX `checkpoints_thread_created_at_idx` ON `checkpoints` (`thread_id`,`created_at`);