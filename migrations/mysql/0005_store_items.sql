CREATE TABLE `store_items` (
	`ns_path` varbinary(2000) NOT NULL,
	`item_key` varbinary(1000) NOT NULL,
	`value` json NOT NULL,
	`embeddings` longblob,
	`created_at` bigint NOT NULL,
	`updated_at` bigint NOT NULL,
	`expires_at` bigint,
	`ttl_minutes` double,
	CONSTRAINT `store_items_pk` PRIMARY KEY(`ns_path`,`item_key`)
);
--> statement-breakpoint
CREATE INDEX `store_items_expires_at_idx` ON `store_items` (`expires_at`);