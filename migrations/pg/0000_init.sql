CREATE TABLE "checkpoint_blobs" (
	"thread_id" text NOT NULL,
	"checkpoint_ns" text DEFAULT '' NOT NULL,
	"channel" text NOT NULL,
	"version" text NOT NULL,
	"type" text NOT NULL,
	"blob" "bytea",
	CONSTRAINT "checkpoint_blobs_pk" PRIMARY KEY("thread_id","checkpoint_ns","channel","version")
) PARTITION BY HASH ("thread_id");
--> statement-breakpoint
CREATE TABLE "checkpoint_blobs_p0" PARTITION OF "checkpoint_blobs" FOR VALUES WITH (MODULUS 8, REMAINDER 0);
--> statement-breakpoint
CREATE TABLE "checkpoint_blobs_p1" PARTITION OF "checkpoint_blobs" FOR VALUES WITH (MODULUS 8, REMAINDER 1);
--> statement-breakpoint
CREATE TABLE "checkpoint_blobs_p2" PARTITION OF "checkpoint_blobs" FOR VALUES WITH (MODULUS 8, REMAINDER 2);
--> statement-breakpoint
CREATE TABLE "checkpoint_blobs_p3" PARTITION OF "checkpoint_blobs" FOR VALUES WITH (MODULUS 8, REMAINDER 3);
--> statement-breakpoint
CREATE TABLE "checkpoint_blobs_p4" PARTITION OF "checkpoint_blobs" FOR VALUES WITH (MODULUS 8, REMAINDER 4);
--> statement-breakpoint
CREATE TABLE "checkpoint_blobs_p5" PARTITION OF "checkpoint_blobs" FOR VALUES WITH (MODULUS 8, REMAINDER 5);
--> statement-breakpoint
CREATE TABLE "checkpoint_blobs_p6" PARTITION OF "checkpoint_blobs" FOR VALUES WITH (MODULUS 8, REMAINDER 6);
--> statement-breakpoint
CREATE TABLE "checkpoint_blobs_p7" PARTITION OF "checkpoint_blobs" FOR VALUES WITH (MODULUS 8, REMAINDER 7);
--> statement-breakpoint
CREATE TABLE "checkpoint_writes" (
	"thread_id" text NOT NULL,
	"checkpoint_ns" text DEFAULT '' NOT NULL,
	"checkpoint_id" text NOT NULL,
	"task_id" text NOT NULL,
	"idx" integer NOT NULL,
	"channel" text NOT NULL,
	"type" text NOT NULL,
	"blob" "bytea",
	"task_path" text DEFAULT '' NOT NULL,
	CONSTRAINT "checkpoint_writes_pk" PRIMARY KEY("thread_id","checkpoint_ns","checkpoint_id","task_id","idx")
) PARTITION BY HASH ("thread_id");
--> statement-breakpoint
CREATE TABLE "checkpoint_writes_p0" PARTITION OF "checkpoint_writes" FOR VALUES WITH (MODULUS 8, REMAINDER 0);
--> statement-breakpoint
CREATE TABLE "checkpoint_writes_p1" PARTITION OF "checkpoint_writes" FOR VALUES WITH (MODULUS 8, REMAINDER 1);
--> statement-breakpoint
CREATE TABLE "checkpoint_writes_p2" PARTITION OF "checkpoint_writes" FOR VALUES WITH (MODULUS 8, REMAINDER 2);
--> statement-breakpoint
CREATE TABLE "checkpoint_writes_p3" PARTITION OF "checkpoint_writes" FOR VALUES WITH (MODULUS 8, REMAINDER 3);
--> statement-breakpoint
CREATE TABLE "checkpoint_writes_p4" PARTITION OF "checkpoint_writes" FOR VALUES WITH (MODULUS 8, REMAINDER 4);
--> statement-breakpoint
CREATE TABLE "checkpoint_writes_p5" PARTITION OF "checkpoint_writes" FOR VALUES WITH (MODULUS 8, REMAINDER 5);
--> statement-breakpoint
CREATE TABLE "checkpoint_writes_p6" PARTITION OF "checkpoint_writes" FOR VALUES WITH (MODULUS 8, REMAINDER 6);
--> statement-breakpoint
CREATE TABLE "checkpoint_writes_p7" PARTITION OF "checkpoint_writes" FOR VALUES WITH (MODULUS 8, REMAINDER 7);
--> statement-breakpoint
CREATE TABLE "checkpoints" (
	"thread_id" text NOT NULL,
	"checkpoint_ns" text DEFAULT '' NOT NULL,
	"checkpoint_id" text NOT NULL,
	"parent_checkpoint_id" text,
	"checkpoint_type" text NOT NULL,
	"checkpoint" "bytea" NOT NULL,
	"channel_versions" jsonb NOT NULL,
	"metadata" jsonb NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "checkpoints_pk" PRIMARY KEY("thread_id","checkpoint_ns","checkpoint_id")
) PARTITION BY HASH ("thread_id");
--> statement-breakpoint
CREATE TABLE "checkpoints_p0" PARTITION OF "checkpoints" FOR VALUES WITH (MODULUS 8, REMAINDER 0);
--> statement-breakpoint
CREATE TABLE "checkpoints_p1" PARTITION OF "checkpoints" FOR VALUES WITH (MODULUS 8, REMAINDER 1);
--> statement-breakpoint
CREATE TABLE "checkpoints_p2" PARTITION OF "checkpoints" FOR VALUES WITH (MODULUS 8, REMAINDER 2);
--> statement-breakpoint
CREATE TABLE "checkpoints_p3" PARTITION OF "checkpoints" FOR VALUES WITH (MODULUS 8, REMAINDER 3);
--> statement-breakpoint
CREATE TABLE "checkpoints_p4" PARTITION OF "checkpoints" FOR VALUES WITH (MODULUS 8, REMAINDER 4);
--> statement-breakpoint
CREATE TABLE "checkpoints_p5" PARTITION OF "checkpoints" FOR VALUES WITH (MODULUS 8, REMAINDER 5);
--> statement-breakpoint
CREATE TABLE "checkpoints_p6" PARTITION OF "checkpoints" FOR VALUES WITH (MODULUS 8, REMAINDER 6);
--> statement-breakpoint
CREATE TABLE "checkpoints_p7" PARTITION OF "checkpoints" FOR VALUES WITH (MODULUS 8, REMAINDER 7);
--> statement-breakpoint
CREATE INDEX "checkpoints_metadata_idx" ON "checkpoints" USING gin ("metadata" jsonb_path_ops);--> statement-breakpoint
CREATE INDEX "checkpoints_checkpoint_id_idx" ON "checkpoints" USING btree ("checkpoint_id");--> statement-breakpoint
CREATE INDEX "checkpoints_thread_checkpoint_id_idx" ON "checkpoints" USING btree ("thread_id","checkpoint_id");--> statement-breakpoint
CREATE INDEX "checkpoints_thread_created_at_idx" ON "checkpoints" USING btree ("thread_id","created_at");