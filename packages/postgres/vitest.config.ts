import { defineProject } from 'vitest/config';
import { sharedProject } from '../../vitest.shared.ts';

export default defineProject(sharedProject('postgres'));
