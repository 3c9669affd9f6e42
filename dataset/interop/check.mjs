// check.mjs DIR: reads every tpucost dataset file in DIR with non-Go readers and prints,
// as JSON, for each file and reader, the row count, the first row's column names and its
// first value (or the reader's error). Arrow IPC files (.arrow) are read with apache-arrow (JS, zstd
// buffers decoded by fzstd) and polars readIPC; Parquet files (.parquet) with DuckDB
// read_parquet and polars readParquet. Temporary files (.tmp) are skipped, as tpucost
// readers skip them. Exit status: 0 when every reader read every file, 1 otherwise.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { tableFromIPC, compressionRegistry, CompressionType } from 'apache-arrow';
import { decompress } from 'fzstd';
import pl from 'nodejs-polars';
import { DuckDBInstance } from '@duckdb/node-api';

const dir = process.argv[2];
if (!dir) {
  console.error('usage: node check.mjs DIR');
  process.exit(2);
}

// apache-arrow views each decompressed buffer in place (a Float64Array needs an 8-byte
// aligned offset), and fzstd may return a view into a larger buffer: copy when unaligned.
compressionRegistry.set(CompressionType.ZSTD, {
  decode: (buf) => {
    const out = decompress(buf);
    return out.byteOffset % 8 === 0 ? out : out.slice();
  },
});

// firstValue is the first column's value of the first row as a string ("" if none).
function firstValue(values) {
  return values.length > 0 ? String(values[0]) : '';
}

async function attempt(fn) {
  try {
    return await fn();
  } catch (e) {
    return { error: String(e && e.message ? e.message : e).split('\n')[0] };
  }
}

const readers = {
  arrow: {
    'apache-arrow': async (path) => {
      const t = tableFromIPC(readFileSync(path));
      const row = t.numRows > 0 ? t.get(0).toJSON() : {};
      return { rows: t.numRows, columns: Object.keys(row), first: firstValue(Object.values(row)) };
    },
    polars: async (path) => {
      // nodejs-polars takes a string as a path only if it ends in .ipc (else as the
      // file's contents), so pass the bytes.
      const df = pl.readIPC(readFileSync(path));
      const row = df.height > 0 ? df.toRecords()[0] : {};
      return { rows: df.height, columns: Object.keys(row), first: firstValue(Object.values(row)) };
    },
  },
  parquet: {
    duckdb: async (path, db) => {
      const conn = await db.connect();
      try {
        const lit = "'" + path.replaceAll("'", "''") + "'";
        const count = await conn.runAndReadAll(`SELECT count(*) AS n FROM read_parquet(${lit})`);
        const first = await conn.runAndReadAll(`SELECT * FROM read_parquet(${lit}) LIMIT 1`);
        const rows = Number(count.getRows()[0][0]);
        const row = first.getRows()[0] || [];
        return { rows, columns: row.length > 0 ? first.columnNames() : [], first: firstValue(row) };
      } finally {
        conn.closeSync();
      }
    },
    polars: async (path) => {
      const df = pl.readParquet(path);
      const row = df.height > 0 ? df.toRecords()[0] : {};
      return { rows: df.height, columns: Object.keys(row), first: firstValue(Object.values(row)) };
    },
  },
};

const db = await DuckDBInstance.create(':memory:');
const out = { dir, files: [] };
let ok = true;
for (const name of readdirSync(dir).sort()) {
  const format = name.endsWith('.arrow') ? 'arrow' : name.endsWith('.parquet') ? 'parquet' : null;
  if (!format) continue;
  const entry = { file: name, format, readers: {} };
  for (const [reader, read] of Object.entries(readers[format])) {
    const r = await attempt(() => read(join(dir, name), db));
    if (r.error) ok = false;
    entry.readers[reader] = r;
  }
  out.files.push(entry);
}
console.log(JSON.stringify(out, null, 2));
process.exit(ok ? 0 : 1);
