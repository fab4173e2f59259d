DROP INDEX `checkpoint_threads_meta_user_id_idx`;--> statement-breakpoint
CREATE INDEX `checkpoint_threads_meta_user_id_idx` ON `checkpoint_threads` (`meta_user_id`,`updated_at`) WHERE meta_user_id is not null;--> statement-breakpoint
DROP INDEX `checkpoints_meta_source_idx`;--> statement-breakpoint
DROP INDEX `checkpoints_meta_run_id_idx`;--> statement-breakpoint
CREATE INDEX `checkpoints_meta_source_idx` ON `checkpoints` (`meta_source`,`checkpoint_id`) WHERE meta_source <> 'loop';--> statement-breakpoint
CREATE INDEX `checkpoints_meta_run_id_idx` ON `checkpoints` (`meta_run_id`) WHERE meta_run_id is not null;