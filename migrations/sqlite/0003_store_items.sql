CREATE TABLE `store_items` (
	`ns_path` text NOT NULL,
	`item_key` text NOT NULL,
	`value` text NOT NULL,
	`embeddings` blob,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`expires_at` integer,
	`ttl_minutes` real,
	PRIMARY KEY(`ns_path`, `item_key`)
);
--> statement-breakpoint
CREATE INDEX `store_items_expires_at_idx` ON `store_items` (`expires_at`);