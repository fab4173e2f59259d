CREATE TABLE "checkpoint_threads" (
	"thread_id" text PRIMARY KEY NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL,
	"checkpoints" integer DEFAULT 0 NOT NULL,
	"latest_checkpoint_id" text,
	"metadata" jsonb,
	"pinned" boolean DEFAULT false NOT NULL
);
--> statement-breakpoint
CREATE INDEX "checkpoint_threads_updated_at_idx" ON "checkpoint_threads" USING btree ("updated_at","thread_id");--> statement-breakpoint
CREATE INDEX "checkpoint_threads_created_at_idx" ON "checkpoint_threads" USING btree ("created_at","thread_id");--> statement-breakpoint
CREATE INDEX "checkpoint_threads_metadata_idx" ON "checkpoint_threads" USING gin ("metadata" jsonb_path_ops) WITH (fastupdate=false);--> statement-breakpoint
-- Hand-written: backfill, one row per thread that has checkpoints (the same row the saver keeps
-- current: first and newest checkpoint in any namespace, count and newest of the root namespace "").
INSERT INTO "checkpoint_threads" ("thread_id", "created_at", "updated_at", "checkpoints", "latest_checkpoint_id", "metadata")
SELECT a."thread_id", a."first_at", a."last_at", a."root_count", l."checkpoint_id", l."metadata"
FROM (
	SELECT "thread_id", min("created_at") AS "first_at", max("created_at") AS "last_at",
		count(*) FILTER (WHERE "checkpoint_ns" = '') AS "root_count"
	FROM "checkpoints" GROUP BY "thread_id"
) a
LEFT JOIN (
	SELECT DISTINCT ON ("thread_id") "thread_id", "checkpoint_id", "metadata"
	FROM "checkpoints" WHERE "checkpoint_ns" = '' ORDER BY "thread_id", "checkpoint_id" DESC
) l ON l."thread_id" = a."thread_id";
