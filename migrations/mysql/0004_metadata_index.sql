CREATE TABLE `checkpoint_metadata` (
	`thread_id` varbinary(1020) NOT NULL,
	`ns_hash` binary(32) NOT NULL,
	`checkpoint_id` varbinary(1020) NOT NULL,
	`key_hash` binary(32) NOT NULL,
	`value_hash` binary(32) NOT NULL,
	`value_number` double,
	CONSTRAINT `checkpoint_metadata_pk` PRIMARY KEY(`thread_id`,`ns_hash`,`checkpoint_id`,`key_hash`)
);
--> statement-breakpoint
CREATE INDEX `checkpoint_metadata_value_idx` ON `checkpoint_metadata` (`key_hash`,`value_hash`,`value_number`,`checkpoint_id`);--> statement-breakpoint
-- Hand-written from here on (re-apply after regenerating: the SQL comes from
-- src/dialects/mysql-metadata-index.ts, names checkpoints / checkpoint_metadata / checkpoint_id;
-- test/migrations/metadata-index.test.ts checks it is the same).
-- Partitioned like the checkpoints table, so a thread's rows sit on one partition (and one Spider shard).
ALTER TABLE `checkpoint_metadata` PARTITION BY KEY (`thread_id`) PARTITIONS 8;
--> statement-breakpoint
-- Triggers keep the side table in the same transaction as every write to checkpoints.
CREATE TRIGGER `checkpoints_metadata_insert` AFTER INSERT ON `checkpoints` FOR EACH ROW
INSERT INTO `checkpoint_metadata` (`thread_id`, `ns_hash`, `checkpoint_id`, `key_hash`, `value_hash`, `value_number`)
  SELECT NEW.`thread_id`, NEW.`ns_hash`, NEW.`checkpoint_id`, unhex(sha2(j.k, 256)),
    CASE json_type(json_extract(NEW.`metadata`, concat('$.', json_quote(j.k))))
      WHEN 'STRING' THEN unhex(sha2(concat('s', json_unquote(json_extract(NEW.`metadata`, concat('$.', json_quote(j.k))))), 256))
      WHEN 'BOOLEAN' THEN unhex(sha2(concat('b', json_extract(NEW.`metadata`, concat('$.', json_quote(j.k)))), 256))
      WHEN 'NULL' THEN unhex(sha2('z', 256))
      ELSE unhex(sha2('n', 256))
    END,
    CASE WHEN json_type(json_extract(NEW.`metadata`, concat('$.', json_quote(j.k)))) IN ('INTEGER', 'UNSIGNED INTEGER', 'DOUBLE', 'DECIMAL') THEN json_extract(NEW.`metadata`, concat('$.', json_quote(j.k))) + 0 END
  FROM JSON_TABLE(json_keys(NEW.`metadata`), '$[*]' COLUMNS (k TEXT CHARACTER SET utf8mb4 PATH '$')) AS j
  WHERE cast(j.k AS binary) NOT IN ('source', 'step', 'run_id')
    AND json_type(json_extract(NEW.`metadata`, concat('$.', json_quote(j.k)))) IN ('STRING', 'BOOLEAN', 'NULL', 'INTEGER', 'UNSIGNED INTEGER', 'DOUBLE', 'DECIMAL');
--> statement-breakpoint
CREATE TRIGGER `checkpoints_metadata_update` AFTER UPDATE ON `checkpoints` FOR EACH ROW
BEGIN
  IF NOT (OLD.`thread_id` <=> NEW.`thread_id`) OR NOT (OLD.`ns_hash` <=> NEW.`ns_hash`) OR NOT (OLD.`checkpoint_id` <=> NEW.`checkpoint_id`) OR NOT (OLD.`metadata` <=> NEW.`metadata`) THEN
    DELETE FROM `checkpoint_metadata` WHERE `thread_id` = OLD.`thread_id` AND `ns_hash` = OLD.`ns_hash` AND `checkpoint_id` = OLD.`checkpoint_id`;
    INSERT INTO `checkpoint_metadata` (`thread_id`, `ns_hash`, `checkpoint_id`, `key_hash`, `value_hash`, `value_number`)
  SELECT NEW.`thread_id`, NEW.`ns_hash`, NEW.`checkpoint_id`, unhex(sha2(j.k, 256)),
    CASE json_type(json_extract(NEW.`metadata`, concat('$.', json_quote(j.k))))
      WHEN 'STRING' THEN unhex(sha2(concat('s', json_unquote(json_extract(NEW.`metadata`, concat('$.', json_quote(j.k))))), 256))
      WHEN 'BOOLEAN' THEN unhex(sha2(concat('b', json_extract(NEW.`metadata`, concat('$.', json_quote(j.k)))), 256))
      WHEN 'NULL' THEN unhex(sha2('z', 256))
      ELSE unhex(sha2('n', 256))
    END,
    CASE WHEN json_type(json_extract(NEW.`metadata`, concat('$.', json_quote(j.k)))) IN ('INTEGER', 'UNSIGNED INTEGER', 'DOUBLE', 'DECIMAL') THEN json_extract(NEW.`metadata`, concat('$.', json_quote(j.k))) + 0 END
  FROM JSON_TABLE(json_keys(NEW.`metadata`), '$[*]' COLUMNS (k TEXT CHARACTER SET utf8mb4 PATH '$')) AS j
  WHERE cast(j.k AS binary) NOT IN ('source', 'step', 'run_id')
    AND json_type(json_extract(NEW.`metadata`, concat('$.', json_quote(j.k)))) IN ('STRING', 'BOOLEAN', 'NULL', 'INTEGER', 'UNSIGNED INTEGER', 'DOUBLE', 'DECIMAL');
  END IF;
END;
--> statement-breakpoint
CREATE TRIGGER `checkpoints_metadata_delete` AFTER DELETE ON `checkpoints` FOR EACH ROW
DELETE FROM `checkpoint_metadata` WHERE `thread_id` = OLD.`thread_id` AND `ns_hash` = OLD.`ns_hash` AND `checkpoint_id` = OLD.`checkpoint_id`;
--> statement-breakpoint
-- Backfill: the side rows of checkpoints written before this migration.
INSERT INTO `checkpoint_metadata` (`thread_id`, `ns_hash`, `checkpoint_id`, `key_hash`, `value_hash`, `value_number`)
  SELECT o.`thread_id`, o.`ns_hash`, o.`checkpoint_id`, unhex(sha2(j.k, 256)),
    CASE json_type(json_extract(o.`metadata`, concat('$.', json_quote(j.k))))
      WHEN 'STRING' THEN unhex(sha2(concat('s', json_unquote(json_extract(o.`metadata`, concat('$.', json_quote(j.k))))), 256))
      WHEN 'BOOLEAN' THEN unhex(sha2(concat('b', json_extract(o.`metadata`, concat('$.', json_quote(j.k)))), 256))
      WHEN 'NULL' THEN unhex(sha2('z', 256))
      ELSE unhex(sha2('n', 256))
    END,
    CASE WHEN json_type(json_extract(o.`metadata`, concat('$.', json_quote(j.k)))) IN ('INTEGER', 'UNSIGNED INTEGER', 'DOUBLE', 'DECIMAL') THEN json_extract(o.`metadata`, concat('$.', json_quote(j.k))) + 0 END
  FROM `checkpoints` AS o, JSON_TABLE(json_keys(o.`metadata`), '$[*]' COLUMNS (k TEXT CHARACTER SET utf8mb4 PATH '$')) AS j
  WHERE cast(j.k AS binary) NOT IN ('source', 'step', 'run_id')
    AND json_type(json_extract(o.`metadata`, concat('$.', json_quote(j.k)))) IN ('STRING', 'BOOLEAN', 'NULL', 'INTEGER', 'UNSIGNED INTEGER', 'DOUBLE', 'DECIMAL')
  ON DUPLICATE KEY UPDATE `value_hash` = values(`value_hash`), `value_number` = values(`value_number`);
