import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import GithubSlugger from 'github-slugger';
import type { Nodes, Root } from 'mdast';
import { fromMarkdown } from 'mdast-util-from-markdown';
import { gfmTableFromMarkdown } from 'mdast-util-gfm-table';
import { gfmTable } from 'micromark-extension-gfm-table';
import { describe, expect, it } from 'vitest';

// Guides move between files as the docs grow; a moved section must not leave a dead link behind. This checks every
// relative link (and its #anchor, slugged as GitHub slugs headings) in README.md and docs/, as a reader would follow it.

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** A Markdown file as the checker sees it: its links, and the anchors its headings make. */
interface Page {
  readonly links: readonly string[];
  readonly anchors: ReadonlySet<string>;
}

function parse(markdown: string): Root {
  return fromMarkdown(markdown, { extensions: [gfmTable()], mdastExtensions: [gfmTableFromMarkdown()] });
}

/** The text of a node as GitHub renders it for a heading's slug (code spans keep their text). */
function plainText(node: Nodes): string {
  if ('value' in node && (node.type === 'text' || node.type === 'inlineCode')) return node.value;
  if ('children' in node) return node.children.map((child) => plainText(child)).join('');
  return '';
}

function readPage(markdown: string): Page {
  const links: string[] = [];
  const slugger = new GithubSlugger();
  const anchors = new Set<string>();
  const visit = (node: Nodes): void => {
    if (node.type === 'link' || node.type === 'definition') links.push(node.url);
    if (node.type === 'heading') anchors.add(slugger.slug(plainText(node)));
    if ('children' in node) for (const child of node.children) visit(child);
  };
  visit(parse(markdown));
  return { links, anchors };
}

/** Reads each Markdown file once, on first use. */
function pageReader(files: ReadonlyMap<string, string>): (path: string) => Page | undefined {
  const pages = new Map<string, Page>();
  return (path) => {
    const text = files.get(path);
    if (text === undefined) return undefined;
    let read = pages.get(path);
    if (!read) pages.set(path, (read = readPage(text)));
    return read;
  };
}

/**
 * Problems with the relative links of `file`: a target that does not exist, or an anchor no heading of the target
 * makes. Links with a scheme (https:, mailto:) are not followed.
 */
function deadLinks(file: string, page: (path: string) => Page | undefined, exists: (path: string) => boolean): string[] {
  const problems: string[] = [];
  for (const link of page(file)?.links ?? []) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue;
    const [pathPart = '', anchor] = link.split('#', 2);
    const target = pathPart === '' ? file : join(dirname(file), decodeURI(pathPart));
    if (pathPart !== '' && !exists(target)) {
      problems.push(`${file}: ${link} → no file ${target}`);
      continue;
    }
    if (anchor === undefined || !target.endsWith('.md')) continue;
    const targetPage = page(target);
    if (!targetPage) problems.push(`${file}: ${link} → ${target} is not among the checked files`);
    else if (!targetPage.anchors.has(decodeURIComponent(anchor))) problems.push(`${file}: ${link} → no heading #${anchor} in ${target}`);
  }
  return problems;
}

function markdownFiles(folder: string): string[] {
  return readdirSync(join(root, folder)).flatMap((name) => {
    const path = join(folder, name);
    if (statSync(join(root, path)).isDirectory()) return markdownFiles(path);
    return name.endsWith('.md') ? [path] : [];
  });
}

describe('links in README.md and docs/', () => {
  const names = ['README.md', ...markdownFiles('docs')];
  const files = new Map(names.map((name) => [name, readFileSync(join(root, name), 'utf8')]));
  const exists = (path: string) => !relative(root, resolve(root, path)).startsWith('..') && existsSync(join(root, path));
  const page = pageReader(files);

  it.each(names)('%s links only to files and headings that exist', (name) => {
    expect(deadLinks(name, page, exists)).toEqual([]);
  });

  it('lists every guide in the docs index, and the README links the index', () => {
    const indexed = new Set((page('docs/README.md')?.links ?? []).map((link) => join('docs', link.split('#')[0] ?? '')));
    const guides = names.filter((name) => name.startsWith('docs/') && name !== 'docs/README.md');
    expect(guides.filter((guide) => !indexed.has(guide))).toEqual([]);
    expect(page('README.md')?.links).toContain('docs/README.md');
  });
});

describe('the link checker', () => {
  const files = new Map([
    [
      'README.md',
      '# Palaver\n\n## Running several processes\n\n[ok](docs/guide.md#set-it-up) [self](#running-several-processes) [web](https://example.com/x.md#nowhere)\n\n```md\n[in code](docs/missing.md)\n```\n',
    ],
    [
      'docs/guide.md',
      '# Guide\n\n## Set it up\n\n## Set it up\n\n### `palaver start` and *Ctrl-C*\n\n[second](#set-it-up-1) [code](#palaver-start-and-ctrl-c) [up](../README.md)\n',
    ],
    [
      'docs/broken.md',
      '# Broken\n\n[gone](moved.md) [anchor](guide.md#settings) [own](#nothing) [table](#x)\n\n| a | b |\n|---|---|\n| [cell](../nope.md) | x |\n',
    ],
  ]);
  const exists = (path: string) => files.has(path) || path === 'docs';
  const page = pageReader(files);

  it('accepts links to files and GitHub-style heading anchors, duplicates numbered, code blocks ignored', () => {
    expect(deadLinks('README.md', page, exists)).toEqual([]);
    expect(deadLinks('docs/guide.md', page, exists)).toEqual([]);
  });

  it('names each dead file and each anchor no heading makes, in tables too', () => {
    expect(deadLinks('docs/broken.md', page, exists)).toEqual([
      'docs/broken.md: moved.md → no file docs/moved.md',
      'docs/broken.md: guide.md#settings → no heading #settings in docs/guide.md',
      'docs/broken.md: #nothing → no heading #nothing in docs/broken.md',
      'docs/broken.md: #x → no heading #x in docs/broken.md',
      'docs/broken.md: ../nope.md → no file nope.md',
    ]);
  });
});

describe("the README's two commands", () => {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const firstBlock = parse(readme).children.find((node) => node.type === 'code');

  it('open the README: install and start the demo, then the test command CI runs', () => {
    expect(firstBlock?.type === 'code' ? firstBlock.value : undefined).toBe(
      [
        'npm ci && npm start -- --demo     # install, then start Palaver on its embedded defaults (SQLite, scripted demo model)',
        'npm test                          # prepare the machine (chromium, PostgreSQL, MariaDB, Redis), lint, typecheck, build, run every suite',
      ].join('\n'),
    );
    const ci = readFileSync(join(root, '.ci/run'), 'utf8');
    expect(ci).toMatch(/^\s*npm test$/m);
  });
});
