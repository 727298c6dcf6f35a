/** commcost's version, stamped into every run (kept equal to package.json's by a unit test). */
export const COMMCOST_VERSION = '0.1.0';
