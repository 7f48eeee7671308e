import { runMatrixEntry } from '@pglock/test-kit';
import { matrix } from './matrix.ts';

runMatrixEntry(matrix.postgresJsViaPgBouncer);
