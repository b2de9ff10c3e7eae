// The two ways a record can fail, as in every weir SDK.

/** This record is bad: it is refused with this reason, and the pipeline's
 * `on-error` decides its fate. Any other exception a function throws for a
 * record is treated the same way. */
export class BadRecord extends Error {}

/** The transform cannot go on: the pipeline stops with this message. */
export class Broken extends Error {}
