/**
 * The annotation engine as the extension loads it: a bundle of its own (dist/annotationEngine.js,
 * scripts/build.mjs LAZY) that register.ts imports on the first Python/C/C++ document, not at
 * activation: the call-site finder (web-tree-sitter's facade and the scans), the annotation model
 * and the workspace's wrapper index. Modules it shares with dist/extension.js (the API map, the
 * runs store, the texts) are taken from there, one instance.
 */
export { CallSiteFinder, shippedGrammars } from '../../sites/callSites';
export { AnnotationModel } from './annotationModel';
export { startWrapperIndex } from './wrapperWatch';
