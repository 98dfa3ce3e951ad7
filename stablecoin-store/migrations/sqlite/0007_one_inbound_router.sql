-- stablecoin-store schema v7 (SQLite): one inbound router under the three products
-- (issue #45, `kernel::inbound` in stablecoin-core).
--
-- 1. One address namespace. Wallets (`wallet_addr:`), escrow deals (`escrow_addr:`) and
--    checkout sessions (`checkout_addr:`) each reserved their deposit addresses in a
--    namespace of their own; all three now use `addr:{rail}:{address}`, so one read
--    finds an address's owner and the unique index refuses an address two products
--    claim. EVM (hex) addresses are keyed lower-cased, as wallets already were; base58
--    addresses (TRON, Solana) exactly as written. Wallets had lower-cased those too, so
--    their keys are rebuilt from the exact address in the wallet's body.
-- 2. One cursor record per rail. The wallet scanner's `scan_cursor` rows become
--    `{rail, positions: {wallet: cursor}, created_at}`; escrow's and checkout's own
--    cursor kinds become the `escrow` and `checkout` positions of the same record, and
--    their rows go. Every product resumes exactly where it stood.

UPDATE unique_keys
   SET key = 'addr:' || CASE
         WHEN substr(key, 13) LIKE 'polygon:%' OR substr(key, 13) LIKE 'base:%'
           OR substr(key, 13) LIKE 'bsc:%' OR substr(key, 13) LIKE 'evm-%'
         THEN substr(key, 13)
         ELSE substr(key, 13, instr(substr(key, 13), ':'))
              || (SELECT json_extract(r.body, '$.addresses."'
                          || substr(key, 13, instr(substr(key, 13), ':') - 1) || '"')
                    FROM records r
                   WHERE r.kind = unique_keys.kind AND r.id = unique_keys.id)
       END
 WHERE substr(key, 1, 12) = 'wallet_addr:';

UPDATE unique_keys
   SET key = 'addr:' || substr(key, 13)
 WHERE substr(key, 1, 12) = 'escrow_addr:';

UPDATE unique_keys
   SET key = 'addr:' || CASE
         WHEN substr(key, 15) LIKE 'polygon:%' OR substr(key, 15) LIKE 'base:%'
           OR substr(key, 15) LIKE 'bsc:%' OR substr(key, 15) LIKE 'evm-%'
         THEN lower(substr(key, 15))
         ELSE substr(key, 15)
       END
 WHERE substr(key, 1, 14) = 'checkout_addr:';

-- Each owner's list of its keys, from the index just rewritten.
UPDATE records
   SET unique_keys = (SELECT json_group_array(u.key) FROM unique_keys u
                       WHERE u.kind = records.kind AND u.id = records.id)
 WHERE kind IN ('wallet', 'escrow', 'payment_session');

UPDATE records
   SET body = json_object('rail', id,
                          'positions', json_object('wallet', json_extract(body, '$.cursor')),
                          'created_at', json_extract(body, '$.created_at')),
       version = version + 1
 WHERE kind = 'scan_cursor';

INSERT INTO records (kind, id, tenant, version, created_at, unique_keys, body)
SELECT 'scan_cursor', o.id, NULL, 1, min(o.created_at), '[]',
       json_object('rail', o.id, 'positions', json_object(), 'created_at', min(o.created_at))
  FROM records o
 WHERE o.kind IN ('escrow_scan_cursor', 'checkout_scan_cursor')
   AND NOT EXISTS (SELECT 1 FROM records c WHERE c.kind = 'scan_cursor' AND c.id = o.id)
 GROUP BY o.id;

UPDATE records
   SET body = json_set(body, '$.positions.escrow',
                       (SELECT json_extract(o.body, '$.cursor') FROM records o
                         WHERE o.kind = 'escrow_scan_cursor' AND o.id = records.id))
 WHERE kind = 'scan_cursor'
   AND id IN (SELECT id FROM records WHERE kind = 'escrow_scan_cursor');

UPDATE records
   SET body = json_set(body, '$.positions.checkout',
                       (SELECT json_extract(o.body, '$.cursor') FROM records o
                         WHERE o.kind = 'checkout_scan_cursor' AND o.id = records.id))
 WHERE kind = 'scan_cursor'
   AND id IN (SELECT id FROM records WHERE kind = 'checkout_scan_cursor');

DELETE FROM records WHERE kind IN ('escrow_scan_cursor', 'checkout_scan_cursor');
