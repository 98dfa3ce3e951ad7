-- stablecoin-store schema v6 (PostgreSQL): one inbound router under the three products
-- (issue #45, `kernel::inbound` in stablecoin-core). The same change as SQLite's 0007:
--
-- 1. One address namespace `addr:{rail}:{address}` for wallets (`wallet_addr:`), escrow
--    deals (`escrow_addr:`) and checkout sessions (`checkout_addr:`). EVM (hex)
--    addresses keyed lower-cased, base58 (TRON, Solana) exactly as written; wallets had
--    lower-cased those too, so their keys are rebuilt from the wallet's body.
-- 2. One cursor record per rail, `{rail, positions: {product: cursor}, created_at}`:
--    escrow's and checkout's own cursor kinds become positions in it, and go.

UPDATE unique_keys u
   SET key = 'addr:' || CASE
         WHEN substr(u.key, 13) LIKE 'polygon:%' OR substr(u.key, 13) LIKE 'base:%'
           OR substr(u.key, 13) LIKE 'bsc:%' OR substr(u.key, 13) LIKE 'evm-%'
         THEN substr(u.key, 13)
         ELSE split_part(substr(u.key, 13), ':', 1) || ':'
              || (SELECT r.body::jsonb -> 'addresses' ->> split_part(substr(u.key, 13), ':', 1)
                    FROM records r
                   WHERE r.kind = u.kind AND r.id = u.id)
       END
 WHERE substr(u.key, 1, 12) = 'wallet_addr:';

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

UPDATE records r
   SET unique_keys = COALESCE((SELECT json_agg(u.key ORDER BY u.key)::text FROM unique_keys u
                                WHERE u.kind = r.kind AND u.id = r.id), '[]')
 WHERE r.kind IN ('wallet', 'escrow', 'payment_session');

UPDATE records
   SET body = jsonb_build_object('rail', id,
                                 'positions', jsonb_build_object('wallet', body::jsonb -> 'cursor'),
                                 'created_at', body::jsonb -> 'created_at')::text,
       version = version + 1
 WHERE kind = 'scan_cursor';

INSERT INTO records (kind, id, tenant, version, created_at, unique_keys, body)
SELECT 'scan_cursor', o.id, NULL, 1, min(o.created_at), '[]',
       jsonb_build_object('rail', o.id, 'positions', '{}'::jsonb,
                          'created_at', min(o.created_at))::text
  FROM records o
 WHERE o.kind IN ('escrow_scan_cursor', 'checkout_scan_cursor')
   AND NOT EXISTS (SELECT 1 FROM records c WHERE c.kind = 'scan_cursor' AND c.id = o.id)
 GROUP BY o.id;

UPDATE records r
   SET body = jsonb_set(r.body::jsonb, '{positions,escrow}', o.body::jsonb -> 'cursor')::text
  FROM records o
 WHERE r.kind = 'scan_cursor' AND o.kind = 'escrow_scan_cursor' AND o.id = r.id;

UPDATE records r
   SET body = jsonb_set(r.body::jsonb, '{positions,checkout}', o.body::jsonb -> 'cursor')::text
  FROM records o
 WHERE r.kind = 'scan_cursor' AND o.kind = 'checkout_scan_cursor' AND o.id = r.id;

DELETE FROM records WHERE kind IN ('escrow_scan_cursor', 'checkout_scan_cursor');
