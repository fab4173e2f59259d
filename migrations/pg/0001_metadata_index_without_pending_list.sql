DROP INDEX "checkpoints_metadata_idx";--> statement-breakpoint
CREATE INDEX "checkpoints_metadata_idx" ON "checkpoints" USING gin ("metadata" jsonb_path_ops) WITH (fastupdate=false);