CREATE TABLE "store_items" (
	"ns_path" text COLLATE "C" NOT NULL,
	"item_key" text COLLATE "C" NOT NULL,
	"value" jsonb NOT NULL,
	"embeddings" "bytea",
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	"expires_at" bigint,
	"ttl_minutes" double precision,
	CONSTRAINT "store_items_pk" PRIMARY KEY("ns_path","item_key")
);
--> statement-breakpoint
CREATE INDEX "store_items_expires_at_idx" ON "store_items" USING btree ("expires_at");