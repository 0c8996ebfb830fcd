// Paging rules shared by every list (contract §5).
import { LIMITS } from '../config.js';
import { invalidInput } from '../errors.js';

export const DEFAULT_PER_PAGE = LIMITS.defaultPageSize;
export const MAX_PER_PAGE = LIMITS.maxPageSize;

export interface PageRequest {
  page?: number | null;
  perPage?: number | null;
}
export interface PageWindow {
  page: number;
  perPage: number;
  skip: number;
  take: number;
}
export interface Pagination {
  page: number;
  perPage: number;
  total: number;
  lastPage: number;
}
export type Direction = 'asc' | 'desc';

export function pageWindow(req: PageRequest): PageWindow {
  const page = req.page ?? 1;
  if (!Number.isInteger(page) || page < 1)
    throw invalidInput('page', `page must be a whole number of 1 or more, got ${page}.`);
  let perPage = req.perPage ?? DEFAULT_PER_PAGE;
  if (!Number.isInteger(perPage) || perPage < 1) {
    throw invalidInput('per_page', `per_page must be a whole number from 1 to ${MAX_PER_PAGE}, got ${perPage}.`);
  }
  perPage = Math.min(perPage, MAX_PER_PAGE);
  return { page, perPage, skip: (page - 1) * perPage, take: perPage };
}

export function paginationOf(w: PageWindow, total: number): Pagination {
  return { page: w.page, perPage: w.perPage, total, lastPage: Math.max(1, Math.ceil(total / w.perPage)) };
}

/** A page of rows after the per-row permission filter; `total` counts rows before it (contract §5). */
export interface Page<T> {
  nodes: T[];
  pagination: Pagination;
}
