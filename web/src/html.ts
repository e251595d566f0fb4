/** Preact with htm's tagged templates: components without a JSX build step. */
import { h } from 'preact';
import htm from 'htm';

export const html = htm.bind(h);
