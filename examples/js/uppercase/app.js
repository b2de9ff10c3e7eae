// Uppercase guest in JavaScript: ASCII-uppercases each record's value; key and
// headers pass through, timestamp is kept. Accepts no configuration.
// Build: scripts/build-polyglot OUTDIR (componentize-js, world `record-transformer`).

const upper = (bytes) => bytes.map((b) => (b >= 0x61 && b <= 0x7a ? b - 0x20 : b));

export const transform = {
  init(config) {
    if (config.length > 0) {
      throw `unknown config key '${config[0][0]}': uppercase takes no configuration`;
    }
  },

  // One output per input, in order: origins/routes/timestamps stay empty.
  processBatch(input) {
    return {
      values: upper(input.values),
      valueEnds: input.valueEnds,
      hasValue: input.hasValue,
      keys: input.keys,
      keyEnds: input.keyEnds,
      hasKey: input.hasKey,
      headers: input.headers,
      headerEnds: input.headerEnds,
      timestamps: new BigInt64Array(0),
      origins: new Uint32Array(0),
      outputs: [],
      routes: new Uint32Array(0),
      rejected: [],
    };
  },
};

export const recordTransform = {
  processRecord(input) {
    const value = input.value === undefined ? undefined : upper(input.value);
    return [{ output: undefined, key: input.key, value, headers: input.headers, timestamp: undefined }];
  },
};
