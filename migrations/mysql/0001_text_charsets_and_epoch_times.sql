ALTER TABLE `checkpoint_blobs` MODIFY COLUMN `checkpoint_ns` blob NOT NULL;--> statement-breakpoint
ALTER TABLE `checkpoint_blobs` MODIFY COLUMN `type` varchar(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL;--> statement-breakpoint
ALTER TABLE `checkpoint_writes` MODIFY COLUMN `checkpoint_ns` blob NOT NULL;--> statement-breakpoint
-- Hand-written: channel had the database's default character set; converted to utf8mb4 first, so that
-- its bytes become UTF-8 (from latin1, say) before the column turns binary.
ALTER TABLE `checkpoint_writes` MODIFY COLUMN `channel` text CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL;--> statement-breakpoint
ALTER TABLE `checkpoint_writes` MODIFY COLUMN `channel` blob NOT NULL;--> statement-breakpoint
ALTER TABLE `checkpoint_writes` MODIFY COLUMN `type` varchar(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL;--> statement-breakpoint
ALTER TABLE `checkpoint_writes` MODIFY COLUMN `task_path` text CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL;--> statement-breakpoint
ALTER TABLE `checkpoints` MODIFY COLUMN `checkpoint_ns` blob NOT NULL;--> statement-breakpoint
ALTER TABLE `checkpoints` MODIFY COLUMN `checkpoint_type` varchar(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL;--> statement-breakpoint
ALTER TABLE `checkpoints` MODIFY COLUMN `meta_source` varchar(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin GENERATED ALWAYS AS (case when json_type(json_extract(metadata, '$.source')) = 'STRING' and char_length(json_unquote(json_extract(metadata, '$.source'))) <= 64 then json_unquote(json_extract(metadata, '$.source')) end) VIRTUAL;--> statement-breakpoint
ALTER TABLE `checkpoints` MODIFY COLUMN `meta_run_id` varchar(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin GENERATED ALWAYS AS (case when json_type(json_extract(metadata, '$.run_id')) = 'STRING' and char_length(json_unquote(json_extract(metadata, '$.run_id'))) <= 255 then json_unquote(json_extract(metadata, '$.run_id')) end) VIRTUAL;--> statement-breakpoint
-- Hand-written: the TIMESTAMP values become milliseconds since the epoch (UNIX_TIMESTAMP of a TIMESTAMP
-- column is its stored UTC value, whatever the session's time zone); a plain MODIFY would keep their digits.
ALTER TABLE `checkpoints` ADD `created_at_ms` bigint;--> statement-breakpoint
UPDATE `checkpoints` SET `created_at_ms` = cast(unix_timestamp(`created_at`) * 1000 as signed);--> statement-breakpoint
ALTER TABLE `checkpoints` DROP INDEX `checkpoints_thread_created_at_idx`, DROP COLUMN `created_at`, CHANGE COLUMN `created_at_ms` `created_at` bigint NOT NULL DEFAULT (timestampdiff(microsecond, '1970-01-01 00:00:00', utc_timestamp(3)) div 1000);--> statement-breakpoint
CREATE INDEX `checkpoints_thread_created_at_idx` ON `checkpoints` (`thread_id`,`created_at`);