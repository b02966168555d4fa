#!/usr/bin/env node
// The admin CLI is TypeScript run by tsx like the services; this shim registers tsx's
// loader and starts cli/main.ts (node resolves the npx symlink to this real path).
import { register } from "tsx/esm/api";

register();
await import(new URL("../cli/main.ts", import.meta.url).href);
